"""A gloo run whose failure names the known mistake behind a peer that went away.

On gloo a rank that returns while one of its ``dist.isend`` requests is still in flight exits (the harness
ends each rank's process as soon as it has answered), and the peer still receiving fails with gloo's
"Connection closed by peer". The simulated group cannot show this mistake (it copies the tensor when the send
is posted). Used by the hidden gloo tests of pipeline and context_parallel.
"""
from infralab.distributed import run_ranks
from infralab.i18n import tr
from infralab.testing import Mismatch

UNWAITED_SEND = ("a rank returned before its dist.isend requests completed: call req.wait() on every send request",
                 "某个 rank 在 dist.isend 请求完成之前就返回了：每个发送请求都要调用 req.wait()")


def run_ranks_on_gloo(impl, module, function, args_per_rank, timeout_s=30):
    try:
        return run_ranks(impl, module, function, args_per_rank, backend="gloo", timeout_s=timeout_s)
    except RuntimeError as exc:
        if "Connection closed by peer" in str(exc):
            raise Mismatch(tr("part02.gloo.peer_gone", function=function, error=str(exc).splitlines()[0][:300]),
                           UNWAITED_SEND) from exc
        raise
