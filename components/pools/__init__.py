"""The capacity pools (GPU/Inferentia Auto Scaling groups, ECS Managed Instances) and the ECS
cluster they join, one feature: input.py (the stack-file sections and the components' inputs),
decisions.py (checks, image handling, decision lines: pure), asg_pool.py, managed_instances_pool.py
and cluster.py (the components), and their pure helpers."""
