"""Speed benchmarks: `mise run bench` (`python -m benchmarks`) prints one Markdown table."""
