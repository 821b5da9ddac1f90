"""Runs under the recording mocks leave no event loop for the garbage collector.

An unclosed loop sits in a reference cycle (its self-pipe reader holds the loop), so the cyclic
collector finalizes it in any order: when its socket goes first, the loop's `__del__` prints
"Exception ignored ... Invalid file descriptor: -1" into the preview's output. Each run must
close the loop it replaces, whatever the collector's timing.
"""

from __future__ import annotations

import asyncio
import gc
import warnings

import pulumi_aws as aws

from tools.recording import run_function


def _program() -> None:
    aws.s3.Bucket("b")


def test_repeated_runs_close_the_loops_they_replace() -> None:
    for view in ("new", "update", "update"):
        run_function(_program, view=view)
    current = asyncio.get_event_loop_policy().get_event_loop()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    unclosed = [w for w in caught if "unclosed event loop" in str(w.message)]
    assert unclosed == [], [str(w.message) for w in unclosed]
    assert not current.is_closed()  # what a caller finds after a run is still usable
