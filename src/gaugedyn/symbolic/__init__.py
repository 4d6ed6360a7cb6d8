"""symbolic."""
