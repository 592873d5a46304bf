"""The loop's record, read by the loop and the observation surface alike: the trajectory (append,
query, its index and scan), the throughput KPI over it, the fleet's worker registry and board."""
