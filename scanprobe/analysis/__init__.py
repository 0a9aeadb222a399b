"""Analysis on plain records (no backend imports)."""
