"""What the operations builders raise."""


class ObservabilityError(ValueError):
    """A setting the builders cannot turn into a valid request; names the setting."""
