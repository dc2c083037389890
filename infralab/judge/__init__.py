"""The isolated judge: student code runs in a caged executor process, verdicts stay here.

- :mod:`infralab.judge.isolated`: the ``impl`` fixture's isolated mode (remote modules, objects, calls);
- :mod:`infralab.judge.cage`: the executor's tree, namespaces, limits, unprivileged user;
- :mod:`infralab.judge.wire`: the message format (JSON + safetensors, never pickle);
- ``boot.py`` and ``executor.py``: run inside the cage (copied there; standard library + torch only).
"""
