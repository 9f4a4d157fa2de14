"""Face: reply tags, face model, animator, renderers."""
