"""Rank topology of 5-D parallelism: rank <-> (tp, cp, ep, dp, pp) coordinates and process groups.

Textbook 02 §2.4 (多维并行编排：TP×PP×DP×EP×CP 组合，rank 拓扑映射) and 07 §7.3 (DeviceMesh).

A training job with tensor (tp), context (cp), expert (ep), data (dp) and pipeline (pp)
parallelism places ``world_size = tp * cp * ep * dp * pp`` ranks on a 5-D grid. Every rank has
one coordinate per dimension, and for each dimension it joins one process group: the ranks
that differ from it in that coordinate only (its tp group all-reduces activations, its dp group
all-reduces gradients, its pp group passes activations stage to stage, ...).

The order string (Megatron-Core's ``order="tp-cp-ep-dp-pp"`` convention): the dimensions
joined by "-", **the first varies fastest**. With order "tp-cp-ep-dp-pp" and sizes
``{"tp": 2, "dp": 2}`` (the others 1), ranks 0 and 1 form a tp group (neighbours, as
tensor parallelism wants: it talks most, so it stays inside a node), and rank = tp + 2 * dp::

    rank = c[o0] + s[o0] * (c[o1] + s[o1] * (c[o2] + s[o2] * (c[o3] + s[o3] * c[o4])))

where ``o0..o4`` are the names of the order string, ``c`` the coordinates and ``s`` the sizes.
Where we differ from Megatron-Core: there, expert parallelism is carved out of data
parallelism for the expert layers (a second rank generator); here ``ep`` is a dimension of its
own and every size multiplies into the world size. ``torch.distributed.device_mesh``'s
``init_device_mesh(device, shape, mesh_dim_names=...)`` lists dimensions the other way round
(the **last** one varies fastest): order "tp-cp-ep-dp-pp" is the mesh of shape (pp, dp, ep, cp,
tp) (the tests cross-check with it on gloo).

Conventions for every function:
- ``sizes``: dict from dimension name ("tp", "cp", "ep", "dp", "pp") to its size (>= 1); a name
  left out has size 1. Any other key, or a size < 1, raises ``ValueError``.
- ``order``: a string of all five names, each once, joined by "-"; anything else raises ``ValueError``.
- ``dims`` (for groups): one name ("tp") or several joined by "-" ("dp-cp", Megatron's combined
  data-and-context group): the group of a rank is every rank that has the same coordinates in all
  the *other* dimensions.
- Ranks in a group are listed in increasing order; a list of groups is sorted by first member.

中文说明：
5 维并行把 world_size = tp·cp·ep·dp·pp 个 rank 排成网格；每个 rank 在每一维有一个坐标，并在每一维
加入一个通信组（除该维坐标外其余坐标都相同的 rank）。order 字符串沿用 Megatron 约定：**写在最前面的
维度变化最快**，例如 "tp-cp-ep-dp-pp" 时 TP 组是相邻 rank（TP 通信最多，应留在同一节点内）。
与 Megatron-Core 不同：这里 ep 是独立的一维（Megatron 把 EP 从 DP 中切出）。PyTorch 的
init_device_mesh 的维度顺序相反（最后一维变化最快）。
"""
from __future__ import annotations

DIMS = ("tp", "cp", "ep", "dp", "pp")


def parse_order(order: str) -> list[str]:
    """The dimension names of ``order``, fastest-varying first.

    Args:
        order: e.g. ``"tp-cp-ep-dp-pp"``: all five names of ``DIMS``, each once, joined by "-".

    Returns:
        The five names as a list, in the order written (``["tp", "cp", "ep", "dp", "pp"]``).

    Raises:
        ValueError: a name missing, repeated or unknown.

    中文：解析 order 字符串；必须恰好包含五个维度名各一次，否则抛 ValueError。
    """
    raise NotImplementedError("parse_order")


def rank_to_coords(rank: int, sizes: dict[str, int], order: str) -> dict[str, int]:
    """The coordinates of ``rank`` in every dimension.

    Args:
        rank: 0 <= rank < world size (else ``ValueError``).
        sizes, order: as in the module docstring.

    Returns:
        ``{"tp": c_tp, "cp": c_cp, "ep": c_ep, "dp": c_dp, "pp": c_pp}``, all five keys, each
        ``0 <= c < size``. Example: ``rank_to_coords(3, {"tp": 2, "dp": 2}, "tp-cp-ep-dp-pp")``
        is ``{"tp": 1, "cp": 0, "ep": 0, "dp": 1, "pp": 0}``.

    中文：rank 到五维坐标（混合进制：order 中第一个维度是最低位）。
    """
    raise NotImplementedError("rank_to_coords")


def coords_to_rank(coords: dict[str, int], sizes: dict[str, int], order: str) -> int:
    """The rank at ``coords`` (the inverse of :func:`rank_to_coords`).

    Args:
        coords: a coordinate per dimension; a name left out is 0; a coordinate outside
            ``[0, size)`` or an unknown name raises ``ValueError``.
        sizes, order: as in the module docstring.

    Returns:
        The rank (an int in ``[0, world size)``).

    中文：五维坐标到 rank，是 rank_to_coords 的逆。
    """
    raise NotImplementedError("coords_to_rank")


def group_ranks(dims: str, sizes: dict[str, int], order: str) -> list[list[int]]:
    """Every process group of ``dims``: each a sorted list of ranks; the groups sorted by first member.

    Args:
        dims: "tp", "dp", ... or several names joined by "-" ("dp-cp"): the dimensions that vary
            inside a group. Unknown or repeated names raise ``ValueError``.
        sizes, order: as in the module docstring.

    Returns:
        ``world_size / (product of the sizes of dims)`` groups, each of that product's ranks;
        together they hold every rank exactly once. Example: sizes ``{"tp": 2, "dp": 2}``, order
        "tp-cp-ep-dp-pp": tp groups ``[[0, 1], [2, 3]]``, dp groups ``[[0, 2], [1, 3]]``.

    中文：列出某一维（或几维组合）的所有通信组；组内 rank 升序，组按第一个成员排序。
    """
    raise NotImplementedError("group_ranks")


def groups_of_rank(rank: int, sizes: dict[str, int], order: str) -> dict[str, list[int]]:
    """The group ``rank`` joins in each of the five dimensions.

    Args:
        rank, sizes, order: as above.

    Returns:
        ``{"tp": [...], "cp": [...], "ep": [...], "dp": [...], "pp": [...]}``: for each dimension
        the sorted members of this rank's group (this rank included; a dimension of size 1 gives
        ``[rank]``).

    中文：某个 rank 在五个维度上各自所属的通信组（包含它自己）。
    """
    raise NotImplementedError("groups_of_rank")
