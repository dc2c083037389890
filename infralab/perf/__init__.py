"""GPU performance challenges: hardware profiles, challenge specs, workloads, timing, verdicts."""
