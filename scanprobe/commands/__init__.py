"""Command functions: they never see the CLI parser; they take values and return a report."""
