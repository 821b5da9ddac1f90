"""CPU cross-encoder re-rankers on Fargate: one feature, one folder.

- `input`: `RerankerConfig`, the re-ranker's input: its stack-file section
  (`platform.rerankers.<name>`, camelCase keys) and its Python input at once, validated by the
  same validators either way.
- `decisions`: what a re-ranker decides from its input and its place behind the endpoint
  (Fargate size, deregistration delay, admission limits, rollout, environment), pure.
- `service`: the `FargateReranker` component.
"""
