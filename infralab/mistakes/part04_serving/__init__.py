"""References and known mistakes of Part 04 (dev-only), and the one way its hidden tests run a
hypothesis state machine."""
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test


def run_machine(machine, *, max_examples: int, steps: int) -> None:
    """Run a ``RuleBasedStateMachine`` without shrinking: a failure is reported as found, at once
    (shrinking a stateful run takes minutes on the course's 2-core machines)."""
    run_state_machine_as_test(machine, settings=settings(
        max_examples=max_examples, stateful_step_count=steps, deadline=None, report_multiple_bugs=False,
        phases=[Phase.explicit, Phase.reuse, Phase.generate]))
