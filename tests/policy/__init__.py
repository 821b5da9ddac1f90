"""Tests of the CrossGuard policy pack and of tools/analyzer_client.py."""
