"""The network (the VPC every task runs in): one feature, one folder.

- `input`: `NetworkConfig`, the network's input: its stack-file section (`platform.network`) and
  its Python input at once, and the endpoint services it names.
- `facts`: what AWS says about an existing VPC, as plain values.
- `decisions`: what the network wires, creates and costs, and the checks an existing VPC must
  pass (`decide`), pure.
- `discover`: reading an existing VPC through the data sources, into those facts.
- `rules`: the security-group rule bodies every task's group uses (`PortRule`, `aws_api_rule`).
- `vpc`: the `Network` component.
"""
