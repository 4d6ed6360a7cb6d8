"""adam."""
