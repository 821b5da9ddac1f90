"""Developer tools: offline preview, resource recording and the policy-pack analyzer client."""
