"""Safe model rollouts: what a new revision must pass before it takes production traffic."""
