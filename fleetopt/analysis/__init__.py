"""What a campaign measured, judged: statistics, verdicts, capacity, cost, the summary and its conclusion, and the
records of hosts, launches and leftover servers they are built from."""
