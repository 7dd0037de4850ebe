"""Built-in CNN graphs: the IOS benchmark networks Inception V3, SqueezeNet, RandWire-WS, NASNet-A.

Each builder returns an immutable :class:`~workbench.values.graph.Graph` whose op costs come from
layer
shapes (see :mod:`workbench.models._layers` for the FLOP, byte and thread-block conventions).
Op ids are hierarchical and readable (``"Mixed_5b/branch5x5_1/conv"``).  Building is O(ops); nothing
is read from disk.  The structures follow the IOS repository (mit-han-lab/inter-operator-scheduler,
``python/ios/models``), notes ``ios.md`` §7.
"""

from __future__ import annotations

from workbench.errors import GraphError, OptionError
from workbench.models._layers import GraphBuilder
from workbench.values.graph import Graph

__all__ = ["inception_v3", "nasnet_a_large", "randwire", "squeezenet"]


def _check_int(value: object, what: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise OptionError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_resolution(net: str, resolution: object, minimum: int) -> int:
    res = _check_int(resolution, f"{net}: resolution", minimum=1)
    if res < minimum:
        raise GraphError(f"{net}: resolution {res} is too small for the network "
                         f"(at least {minimum} needed)")
    return res


# --------------------------------------------------------------------------------- Inception V3
INCEPTION_MIN_RESOLUTION = 75  # torchvision's documented minimum; 74 leaves Mixed_7a with 0x0


def _basic_conv(b: GraphBuilder, x: str, cout: int, k: int | tuple[int, int], *, fused: bool,
                name: str, stride: int = 1, padding: int | tuple[int, int] = 0) -> str:
    """torchvision's BasicConv2d: conv → BN → ReLU (three ops), or one conv+bias+ReLU op (IOS)."""
    if fused:
        return b.conv(x, cout, k, stride=stride, padding=padding, bias=True, act="relu",
                      name=f"{name}/conv")
    y = b.conv(x, cout, k, stride=stride, padding=padding, bias=False, name=f"{name}/conv")
    y = b.batchnorm(y, eps=1e-3, name=f"{name}/bn")
    return b.relu(y, name=f"{name}/relu")


def _inception_a(b: GraphBuilder, x: str, pool_features: int, *, fused: bool, name: str) -> str:
    b1 = _basic_conv(b, x, 64, 1, fused=fused, name=f"{name}/branch1x1")
    b5 = _basic_conv(b, x, 48, 1, fused=fused, name=f"{name}/branch5x5_1")
    b5 = _basic_conv(b, b5, 64, 5, padding=2, fused=fused, name=f"{name}/branch5x5_2")
    b3 = _basic_conv(b, x, 64, 1, fused=fused, name=f"{name}/branch3x3dbl_1")
    b3 = _basic_conv(b, b3, 96, 3, padding=1, fused=fused, name=f"{name}/branch3x3dbl_2")
    b3 = _basic_conv(b, b3, 96, 3, padding=1, fused=fused, name=f"{name}/branch3x3dbl_3")
    bp = b.avgpool(x, 3, stride=1, padding=1, name=f"{name}/avg_pool")
    bp = _basic_conv(b, bp, pool_features, 1, fused=fused, name=f"{name}/branch_pool")
    return b.concat([b1, b5, b3, bp], name=f"{name}/concat")


def _inception_b(b: GraphBuilder, x: str, *, fused: bool, name: str) -> str:
    b3 = _basic_conv(b, x, 384, 3, stride=2, fused=fused, name=f"{name}/branch3x3")
    bd = _basic_conv(b, x, 64, 1, fused=fused, name=f"{name}/branch3x3dbl_1")
    bd = _basic_conv(b, bd, 96, 3, padding=1, fused=fused, name=f"{name}/branch3x3dbl_2")
    bd = _basic_conv(b, bd, 96, 3, stride=2, fused=fused, name=f"{name}/branch3x3dbl_3")
    bp = b.maxpool(x, 3, stride=2, name=f"{name}/max_pool")
    return b.concat([b3, bd, bp], name=f"{name}/concat")


def _inception_c(b: GraphBuilder, x: str, c7: int, *, fused: bool, name: str) -> str:
    row, col = ((1, 7), (0, 3)), ((7, 1), (3, 0))  # (kernel, padding) of 1x7 and 7x1 convs
    b1 = _basic_conv(b, x, 192, 1, fused=fused, name=f"{name}/branch1x1")
    b7 = _basic_conv(b, x, c7, 1, fused=fused, name=f"{name}/branch7x7_1")
    b7 = _basic_conv(b, b7, c7, row[0], padding=row[1], fused=fused, name=f"{name}/branch7x7_2")
    b7 = _basic_conv(b, b7, 192, col[0], padding=col[1], fused=fused, name=f"{name}/branch7x7_3")
    bd = _basic_conv(b, x, c7, 1, fused=fused, name=f"{name}/branch7x7dbl_1")
    for i, (kernel, pad) in enumerate((col, row, col, row), start=2):
        cout = 192 if i == 5 else c7
        bd = _basic_conv(b, bd, cout, kernel, padding=pad, fused=fused,
                         name=f"{name}/branch7x7dbl_{i}")
    bp = b.avgpool(x, 3, stride=1, padding=1, name=f"{name}/avg_pool")
    bp = _basic_conv(b, bp, 192, 1, fused=fused, name=f"{name}/branch_pool")
    return b.concat([b1, b7, bd, bp], name=f"{name}/concat")


def _inception_d(b: GraphBuilder, x: str, *, fused: bool, name: str) -> str:
    b3 = _basic_conv(b, x, 192, 1, fused=fused, name=f"{name}/branch3x3_1")
    b3 = _basic_conv(b, b3, 320, 3, stride=2, fused=fused, name=f"{name}/branch3x3_2")
    b7 = _basic_conv(b, x, 192, 1, fused=fused, name=f"{name}/branch7x7x3_1")
    b7 = _basic_conv(b, b7, 192, (1, 7), padding=(0, 3), fused=fused,
                     name=f"{name}/branch7x7x3_2")
    b7 = _basic_conv(b, b7, 192, (7, 1), padding=(3, 0), fused=fused,
                     name=f"{name}/branch7x7x3_3")
    b7 = _basic_conv(b, b7, 192, 3, stride=2, fused=fused, name=f"{name}/branch7x7x3_4")
    bp = b.maxpool(x, 3, stride=2, name=f"{name}/max_pool")
    return b.concat([b3, b7, bp], name=f"{name}/concat")


def _inception_e(b: GraphBuilder, x: str, *, fused: bool, name: str) -> str:
    b1 = _basic_conv(b, x, 320, 1, fused=fused, name=f"{name}/branch1x1")
    b3 = _basic_conv(b, x, 384, 1, fused=fused, name=f"{name}/branch3x3_1")
    b3a = _basic_conv(b, b3, 384, (1, 3), padding=(0, 1), fused=fused,
                      name=f"{name}/branch3x3_2a")
    b3b = _basic_conv(b, b3, 384, (3, 1), padding=(1, 0), fused=fused,
                      name=f"{name}/branch3x3_2b")
    bd = _basic_conv(b, x, 448, 1, fused=fused, name=f"{name}/branch3x3dbl_1")
    bd = _basic_conv(b, bd, 384, 3, padding=1, fused=fused, name=f"{name}/branch3x3dbl_2")
    bda = _basic_conv(b, bd, 384, (1, 3), padding=(0, 1), fused=fused,
                      name=f"{name}/branch3x3dbl_3a")
    bdb = _basic_conv(b, bd, 384, (3, 1), padding=(1, 0), fused=fused,
                      name=f"{name}/branch3x3dbl_3b")
    bp = b.avgpool(x, 3, stride=1, padding=1, name=f"{name}/avg_pool")
    bp = _basic_conv(b, bp, 192, 1, fused=fused, name=f"{name}/branch_pool")
    return b.concat([b1, b3a, b3b, bda, bdb, bp], name=f"{name}/concat")


def inception_v3(batch: int = 1, *, resolution: int = 299, fused: bool = True,
                 classifier: bool = False) -> Graph:
    """Inception V3 as in torchvision, ``Conv2d_1a_3x3`` through ``Mixed_7c`` and the global pool.

    Matches torchvision's ``inception_v3`` layer for layer (kernels, strides, paddings, channels,
    branch order): the stem, 3 × InceptionA (pool features 32/64/64), InceptionB, 4 × InceptionC
    (c7 = 128/160/160/192), InceptionD, 2 × InceptionE (the 1×3/3×1 pairs concatenated flat, a
    6-way concat) and the global average pool, at ``resolution`` × ``resolution`` (299 gives
    192×35×35 after the stem, 768×17×17, 1280×8×8 and 2048×8×8).

    ``fused=True`` (the default) is the IOS benchmark graph: one ``conv2d`` op with bias and fused
    ReLU per conv, no BatchNorm: 119 ops (94 convs, 13 pools, 11 concats, 1 global pool), 5.71 G
    conv multiply-adds at batch 1.  ``fused=False`` emits every BasicConv2d as ``conv2d`` (no bias)
    → ``batchnorm`` → ``relu``: 307 ops.  The default is ``True`` as for every IOS network
    (``randwire``, ``nasnet_a_large``, ``squeezenet``): the simulator is fitted to IOS's published
    measurements of these graphs (``workbench/data/fidelity.json``), so ``--model inception_v3``
    is the graph the README's fidelity table speaks of.  ``classifier=True`` appends ``flatten``
    and ``fc`` (2048 → 1000, kind ``matmul``).  Simplified: no AuxLogits, no dropout, no input
    transform.  Raises :class:`GraphError` below resolution 75.  Complexity: O(ops).

    Examples
    --------
    >>> len(inception_v3(fused=True))
    119
    """
    n = _check_int(batch, "inception_v3: batch", minimum=1)
    res = _check_resolution("inception_v3", resolution, INCEPTION_MIN_RESOLUTION)
    b = GraphBuilder(f"inception_v3{'_fused' if fused else ''}_b{n}")
    x = b.input("input", (n, 3, res, res))
    x = _basic_conv(b, x, 32, 3, stride=2, fused=fused, name="Conv2d_1a_3x3")
    x = _basic_conv(b, x, 32, 3, fused=fused, name="Conv2d_2a_3x3")
    x = _basic_conv(b, x, 64, 3, padding=1, fused=fused, name="Conv2d_2b_3x3")
    x = b.maxpool(x, 3, stride=2, name="maxpool1")
    x = _basic_conv(b, x, 80, 1, fused=fused, name="Conv2d_3b_1x1")
    x = _basic_conv(b, x, 192, 3, fused=fused, name="Conv2d_4a_3x3")
    x = b.maxpool(x, 3, stride=2, name="maxpool2")
    for block, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        x = _inception_a(b, x, pool_features, fused=fused, name=block)
    x = _inception_b(b, x, fused=fused, name="Mixed_6a")
    for block, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = _inception_c(b, x, c7, fused=fused, name=block)
    x = _inception_d(b, x, fused=fused, name="Mixed_7a")
    x = _inception_e(b, x, fused=fused, name="Mixed_7b")
    x = _inception_e(b, x, fused=fused, name="Mixed_7c")
    x = b.global_avgpool(x, name="avgpool")
    if classifier:
        x = b.flatten(x, name="flatten")
        b.linear(x, 1000, name="fc")
    return b.build()


# --------------------------------------------------------------------------------- SqueezeNet
SQUEEZENET_MIN_RESOLUTION = 29  # 28 leaves the third max pool with an empty output
SQUEEZENET_FIRES = ((16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256),
                    (64, 256))  # (squeeze, expand) of fire2..fire9


def _conv_act(b: GraphBuilder, x: str, cout: int, k: int, *, fused: bool, name: str,
              stride: int = 1, padding: int = 0) -> str:
    """conv + ReLU as one op (``fused``) or as ``<name>`` then ``<name>/relu``."""
    if fused:
        return b.conv(x, cout, k, stride=stride, padding=padding, act="relu", name=name)
    y = b.conv(x, cout, k, stride=stride, padding=padding, name=name)
    return b.relu(y, name=f"{name}/relu")


def squeezenet(batch: int = 1, *, resolution: int = 224, fused: bool = True) -> Graph:
    """SqueezeNet v1.0 with the "complex bypass", the IOS benchmark variant.

    Stem 7×7/2 conv (96, pad 3) → max pool 3/2; fire2–fire9 with (squeeze, expand) from
    :data:`SQUEEZENET_FIRES` and a 3/2 max pool after fire4 and fire8; tail 1×1 conv (1000, ReLU)
    → global average pool.  A fire module is squeeze 1×1 → expand 3×3 (pad 1) beside expand 1×1
    → concat (3×3 first, as IOS) → ``add`` with a shortcut: the identity when channels match,
    else a 1×1 conv.  Spatial sizes 112 → 55 → 27 → 13 at 224.

    ``fused=True`` (IOS: conv + bias + ReLU as one op) gives 50 ops and 1.19 G conv
    multiply-adds at batch 1; ``fused=False`` emits each ReLU as its own op (80 ops).  Differs
    from torchvision's ``squeezenet1_0`` in the stem padding, the pool ceil mode, the bypasses and
    the classifier (no dropout).  Raises :class:`GraphError` below resolution 29.
    Complexity: O(ops).

    Examples
    --------
    >>> len(squeezenet())
    50
    """
    n = _check_int(batch, "squeezenet: batch", minimum=1)
    res = _check_resolution("squeezenet", resolution, SQUEEZENET_MIN_RESOLUTION)
    b = GraphBuilder(f"squeezenet{'_fused' if fused else ''}_b{n}")
    x = b.input("input", (n, 3, res, res))
    x = _conv_act(b, x, 96, 7, stride=2, padding=3, fused=fused, name="conv1")
    x = b.maxpool(x, 3, stride=2, name="maxpool1")
    for i, (squeeze, expand) in enumerate(SQUEEZENET_FIRES, start=2):
        name = f"fire{i}"
        s = _conv_act(b, x, squeeze, 1, fused=fused, name=f"{name}/squeeze1x1")
        e3 = _conv_act(b, s, expand, 3, padding=1, fused=fused, name=f"{name}/expand3x3")
        e1 = _conv_act(b, s, expand, 1, fused=fused, name=f"{name}/expand1x1")
        y = b.concat([e3, e1], name=f"{name}/concat")
        shortcut = x
        if b.shape(x)[1] != 2 * expand:
            shortcut = _conv_act(b, x, 2 * expand, 1, fused=fused, name=f"{name}/shortcut")
        x = b.add(y, shortcut, name=f"{name}/add")
        if i in (4, 8):
            x = b.maxpool(x, 3, stride=2, name=f"maxpool{i // 4 + 1}")
    x = _conv_act(b, x, 1000, 1, fused=fused, name="conv10")
    b.global_avgpool(x, name="avgpool")
    return b.build()


# --------------------------------------------------------------------------------- RandWire
# The four IOS stage graphs (randwire_graphs/generated/ws-{16,32}-4-0.75-{2,3,4,5}.txt), each edge
# "u-v" directed u -> v (u < v): (stage name, nodes, channels, edges).
RANDWIRE_STAGES: tuple[tuple[str, int, int, str], ...] = (
    ("conv2", 16, 154,
     "0-6 0-7 0-9 1-6 1-7 1-15 2-6 2-10 2-11 3-9 3-13 4-6 4-9 4-13 4-14 4-15 5-8 5-10 5-15 6-8 "
     "6-9 6-12 7-11 7-15 8-11 9-11 10-14 11-14 12-14 13-14 13-15 14-15"),
    ("conv3", 32, 308,
     "0-2 0-13 0-25 0-30 1-8 1-20 1-22 2-3 2-16 2-24 2-30 3-6 3-7 3-26 4-12 4-22 5-15 5-21 "
     "5-27 6-11 6-21 6-31 7-8 7-9 7-15 8-23 8-27 9-10 9-11 9-19 10-12 10-30 11-13 11-15 11-17 "
     "11-28 12-14 12-26 12-31 13-14 13-16 13-21 13-31 14-16 14-28 14-29 15-19 15-22 16-18 "
     "17-18 17-19 18-24 18-31 20-21 20-22 21-23 21-26 22-31 24-31 25-26 26-31 27-29 29-30 "
     "29-31"),
    ("conv4", 32, 616,
     "0-9 0-11 0-14 0-17 0-31 1-2 1-3 1-31 2-4 2-11 2-12 2-14 2-30 3-4 3-25 4-9 4-20 4-29 5-6 "
     "5-27 6-7 6-21 6-27 7-30 7-31 8-10 8-25 9-10 9-14 10-11 10-16 10-22 10-28 11-16 11-24 "
     "12-13 12-14 12-15 12-16 13-14 13-22 13-26 14-23 15-29 16-21 17-26 18-19 18-20 19-22 "
     "19-27 20-22 22-25 22-30 23-27 24-25 24-26 25-28 26-28 27-28 27-29 28-29 29-30 29-31 "
     "30-31"),
    ("conv5", 32, 1232,
     "0-17 0-20 0-24 1-10 1-22 1-26 1-29 2-19 2-22 2-28 3-6 3-7 3-8 3-9 4-5 4-7 4-26 5-6 5-23 "
     "5-24 6-8 7-8 7-11 7-18 7-23 8-11 8-25 9-11 9-19 9-27 9-29 10-12 10-17 10-30 11-14 11-23 "
     "11-30 12-13 12-25 12-31 13-16 13-27 13-28 14-24 15-16 15-18 15-21 16-17 16-22 17-21 "
     "18-24 19-22 20-23 20-28 20-29 22-25 23-30 24-26 25-28 27-28 27-29 27-30 29-31 30-31"),
)


def randwire_edges(stage: str) -> list[tuple[int, int]]:
    """The directed edge list of one RandWire stage (``"conv2"`` … ``"conv5"``)."""
    for name, _, _, text in RANDWIRE_STAGES:
        if name == stage:
            return [(int(u), int(v)) for u, v in (e.split("-") for e in text.split())]
    known = ", ".join(s[0] for s in RANDWIRE_STAGES)
    raise OptionError(f"unknown RandWire stage {stage!r} (known: {known})")


def _randwire_node(b: GraphBuilder, x: str, cout: int, stride: int, *, fused: bool,
                   name: str) -> str:
    if fused:
        return b.sepconv(x, cout, 3, stride=stride, bias=True, name=f"{name}/sepconv")
    y = b.relu(x, name=f"{name}/relu")
    y = b.conv(y, b.shape(y)[1], 3, stride=stride, padding=1, groups=b.shape(y)[1], bias=False,
               name=f"{name}/dwconv")
    return b.conv(y, cout, 1, bias=False, name=f"{name}/pwconv")


def _randwire_stage(b: GraphBuilder, x: str, nodes: int, channels: int,
                    edges: list[tuple[int, int]], *, fused: bool, name: str) -> str:
    preds: list[list[int]] = [[] for _ in range(nodes)]
    has_succ = [False] * nodes
    for u, v in edges:
        preds[v].append(u)
        has_succ[u] = True
    out: list[str] = []
    for v in range(nodes):  # edges go from lower to higher index: index order is topological
        node = f"{name}/node{v}"
        if not preds[v]:
            inp, stride = x, 2
        elif len(preds[v]) == 1:
            inp, stride = out[preds[v][0]], 1
        else:
            inp, stride = b.add(*(out[u] for u in preds[v]), name=f"{node}/sum"), 1
        out.append(_randwire_node(b, inp, channels, stride, fused=fused, name=node))
    sinks = [out[v] for v in range(nodes) if not has_succ[v]]
    return sinks[0] if len(sinks) == 1 else b.add(*sinks, name=f"{name}/out")


def randwire(batch: int = 1, *, resolution: int = 224, fused: bool = True) -> Graph:
    """RandWire-WS (K=4, P=0.75, C=154, "regular" regime) as benchmarked by IOS.

    Front conv 3×3/2 (pad 1, 3 → 77, no activation); four random stages ``conv2``–``conv5`` with
    16/32/32/32 nodes at 154/308/616/1232 channels, wired by the exact IOS edge lists
    (:data:`RANDWIRE_STAGES`); tail ReLU → 1×1 conv (1232 → 1280) → global average pool.  A node
    is ReLU → depthwise 3×3 (stride 2 on the stage's source nodes, which read the stage input) →
    pointwise 1×1.  A node with several predecessors reads their plain sum (an ``add`` op
    ``<node>/sum``; the original RandWire uses learned sigmoid weights); the stage output is the
    ``add`` of its sink nodes (``<stage>/out``; no op when there is one sink).

    ``fused=True`` emits each node as ONE ``sepconv`` op (IOS's ``ReluSepConv`` unit);
    ``fused=False`` as ``relu``, depthwise ``conv2d`` (groups = channels) and 1×1 ``conv2d``.
    IOS folds the input sums into the nodes and always has a stage-exit op, so its 120 schedulable
    units are our ops minus the ``/sum`` adds plus one per single-sink stage; conv multiply-adds
    (7.82 G at batch 1) match exactly.  Complexity: O(ops).

    Examples
    --------
    >>> sum(op.kind == "sepconv" for op in randwire().ops)
    112
    """
    n = _check_int(batch, "randwire: batch", minimum=1)
    res = _check_resolution("randwire", resolution, 1)
    b = GraphBuilder(f"randwire{'_fused' if fused else ''}_b{n}")
    x = b.input("input", (n, 3, res, res))
    x = b.conv(x, 77, 3, stride=2, padding=1, name="conv1")
    for name, nodes, channels, _ in RANDWIRE_STAGES:
        x = _randwire_stage(b, x, nodes, channels, randwire_edges(name), fused=fused, name=name)
    x = b.relu(x, name="tail/relu")
    x = b.conv(x, 1280, 1, name="tail/conv")
    b.global_avgpool(x, name="avgpool")
    return b.build()


# --------------------------------------------------------------------------------- NASNet-A large
NASNET_RESOLUTION = 331


class _Nas:
    """Emits NASNet-A pieces as IOS units: ``ReluConv`` (conv with ``pre_act``) and ``ReluSepConv``
    (``sepconv``), or their separate kernels when not ``fused``."""

    def __init__(self, b: GraphBuilder, fused: bool) -> None:
        self.b, self.fused = b, fused

    def relu_conv(self, x: str, cout: int, *, stride: int = 1, name: str) -> str:
        if self.fused:
            return self.b.conv(x, cout, 1, stride=stride, pre_act="relu", name=name)
        y = self.b.relu(x, name=f"{name}/relu")
        return self.b.conv(y, cout, 1, stride=stride, name=f"{name}/conv")

    def relu_sep(self, x: str, cout: int, k: int, *, stride: int = 1, name: str) -> str:
        if self.fused:
            return self.b.sepconv(x, cout, k, stride=stride, bias=True, name=name)
        cin = self.b.shape(x)[1]
        y = self.b.relu(x, name=f"{name}/relu")
        y = self.b.conv(y, cin, k, stride=stride, padding=k // 2, groups=cin, bias=False,
                        name=f"{name}/dwconv")
        return self.b.conv(y, cout, 1, bias=False, name=f"{name}/pwconv")

    def branch(self, x: str, cout: int, k: int, *, stride: int = 1, stem: bool = False,
               name: str) -> str:
        """BranchSeparables: two ReluSepConv in series; the first keeps the input channels
        (``stem``: goes straight to ``cout``), the second has stride 1."""
        mid = cout if stem else self.b.shape(x)[1]
        y = self.relu_sep(x, mid, k, stride=stride, name=f"{name}/sep1")
        return self.relu_sep(y, cout, k, name=f"{name}/sep2")

    def pool(self, x: str, kind: str, stride: int, *, name: str) -> str:
        pool = self.b.maxpool if kind == "max" else self.b.avgpool
        return pool(x, 3, stride=stride, padding=1, name=name)

    def reduction(self, left: str, right: str, c: int, *, variant: str, name: str) -> str:
        """The reduction combinations of ``right`` (from x) and ``left`` (from x_prev): out =
        concat(c1, c2, c3, c4), 4c channels at half the resolution.  ``variant``: ``"stem0"``
        (left branches read the raw stem input with the stem branch; c3 = avg(c0) + c0, as IOS
        has it), ``"stem1"`` (c3 = avg(c0) + c1) or ``"cell"`` (c3 = c1 + avg(c0))."""
        b, n, stem = self.b, name, variant == "stem0"
        c0 = b.add(self.branch(right, c, 5, stride=2, name=f"{n}/comb0_left"),
                   self.branch(left, c, 7, stride=2, stem=stem, name=f"{n}/comb0_right"),
                   name=f"{n}/comb0")
        c1 = b.add(self.pool(right, "max", 2, name=f"{n}/comb1_left"),
                   self.branch(left, c, 7, stride=2, stem=stem, name=f"{n}/comb1_right"),
                   name=f"{n}/comb1")
        c2l = self.pool(right, "avg", 2, name=f"{n}/comb2_left")
        c2r = self.branch(left, c, 5, stride=2, stem=stem, name=f"{n}/comb2_right")
        c3r = self.pool(c0, "avg", 1, name=f"{n}/comb3_right")
        c4l = self.branch(c0, c, 3, name=f"{n}/comb4_left")
        c4r = self.pool(right, "max", 2, name=f"{n}/comb4_right")
        c2 = b.add(c2l, c2r, name=f"{n}/comb2")
        c3_terms = {"stem0": (c3r, c0), "stem1": (c3r, c1), "cell": (c1, c3r)}[variant]
        c3 = b.add(*c3_terms, name=f"{n}/comb3")
        c4 = b.add(c4l, c4r, name=f"{n}/comb4")
        return b.concat([c1, c2, c3, c4], name=f"{n}/concat")

    def normal(self, xl: str, xr: str, c: int, *, first: bool, name: str) -> list[str]:
        """The five normal-cell combinations of ``xl`` (from x_prev) and ``xr`` (from x)."""
        b, n = self.b, name
        right0 = xr if first else xl  # IOS's first cell: comb0 = sep5(xr) + sep3(xr)
        c0 = b.add(self.branch(xr, c, 5, name=f"{n}/comb0_left"),
                   self.branch(right0, c, 3, name=f"{n}/comb0_right"), name=f"{n}/comb0")
        c1 = b.add(self.branch(xl, c, 5, name=f"{n}/comb1_left"),
                   self.branch(xl, c, 3, name=f"{n}/comb1_right"), name=f"{n}/comb1")
        c2l = self.pool(xr, "avg", 1, name=f"{n}/comb2_left")
        c3l = self.pool(xl, "avg", 1, name=f"{n}/comb3_left")
        c3r = self.pool(xl, "avg", 1, name=f"{n}/comb3_right")
        c4l = self.branch(xr, c, 3, name=f"{n}/comb4_left")
        return [c0, c1, b.add(c2l, xl, name=f"{n}/comb2"), b.add(c3l, c3r, name=f"{n}/comb3"),
                b.add(c4l, xr, name=f"{n}/comb4")]

    def first_cell(self, x: str, x_prev: str, c: int, *, name: str) -> str:
        xl = self.b.concat([self.relu_conv(x_prev, c // 2, stride=2, name=f"{name}/path_1"),
                            self.relu_conv(x_prev, c // 2, stride=2, name=f"{name}/path_2")],
                           name=f"{name}/path_concat")
        xr = self.relu_conv(x, c, name=f"{name}/conv_1x1")
        return self.b.concat([xl, *self.normal(xl, xr, c, first=True, name=name)],
                             name=f"{name}/concat")

    def normal_cell(self, x: str, x_prev: str, c: int, *, name: str) -> str:
        xl = self.relu_conv(x_prev, c, name=f"{name}/conv_prev_1x1")
        xr = self.relu_conv(x, c, name=f"{name}/conv_1x1")
        return self.b.concat(self.normal(xl, xr, c, first=False, name=name),
                             name=f"{name}/concat")

    def reduction_cell(self, x: str, x_prev: str, c: int, *, name: str) -> str:
        xl = self.relu_conv(x_prev, c, name=f"{name}/conv_prev_1x1")
        xr = self.relu_conv(x, c, name=f"{name}/conv_1x1")
        return self.reduction(xl, xr, c, variant="cell", name=name)


def nasnet_a_large(batch: int = 1, *, fused: bool = True,
                   resolution: int = NASNET_RESOLUTION) -> Graph:
    """NASNet-A large (6@4032) as benchmarked by IOS (``nasnet_large(96, 168)``), at 331×331.

    ``conv0`` 3×3/2 (96) → ``stem0`` (42 filters) → ``stem1`` (84) → ``cell0`` (first cell) and
    ``cell1``–``cell5`` at 42×42 (168 filters) → ``reduction0`` → ``cell6``–``cell11`` at 21×21
    (336) → ``reduction1`` → ``cell12``–``cell17`` at 11×11 (672) → ``relu`` → ``avgpool``.
    Units are IOS's: ``ReluConv`` (a ``conv2d`` with ``pre_act="relu"``), ``ReluSepConv``
    (``sepconv``), 3×3 pools with pad 1, ``add`` and ``concat``.  A branch is two ReluSepConvs in
    series.  The wiring follows IOS and the reference: the first cell after a reduction reads the
    reduction's x_prev (cell4, cell10) as its x_prev.

    IOS's differences from the reference are kept:

    - the normal cell concatenates 5 combinations (840/1680/3360 channels), the first cell 6
      (x_left and the 5);
    - a first cell's x_left is the concat of two strided ReluConvs, and stem1's x_right is their
      *sum* (the reference uses a shifted-pool path);
    - the first cell takes both comb0 branches from x_right;
    - stem0's third combination is avg(c0) + c0.

    ``fused=True`` gives 476 ops: IOS's 374 schedulable units, plus the sums IOS folds into each
    cell's concat as separate ``add`` ops (5 per normal or first cell, 3 per stem or reduction
    cell).  Conv multiply-adds are 22.18 G at batch 1, exactly as IOS.  ``fused=False`` splits
    every unit into its kernels.  ``resolution`` is IOS's 331 by default (smaller ones, down to
    3, keep every op and shrink the images, e.g. for fast CPU tests).  Complexity: O(ops).

    Examples
    --------
    >>> len(nasnet_a_large()), len(nasnet_a_large(resolution=32))
    (476, 476)
    """
    n = _check_int(batch, "nasnet_a_large: batch", minimum=1)
    res = _check_resolution("nasnet_a_large", resolution, 3)
    b = GraphBuilder(f"nasnet_a_large{'_fused' if fused else ''}_b{n}")
    nas = _Nas(b, fused)
    x = b.input("input", (n, 3, res, res))
    conv0 = b.conv(x, 96, 3, stride=2, name="conv0")
    x1 = nas.relu_conv(conv0, 42, name="stem0/conv_1x1")
    stem0 = nas.reduction(conv0, x1, 42, variant="stem0", name="stem0")
    left = nas.relu_conv(stem0, 84, name="stem1/conv_1x1")
    right = b.add(nas.relu_conv(conv0, 42, stride=2, name="stem1/path_1"),
                  nas.relu_conv(conv0, 42, stride=2, name="stem1/path_2"), name="stem1/path_sum")
    stem1 = nas.reduction(right, left, 84, variant="stem1", name="stem1")
    prev, cur = stem0, stem1
    for group, c in enumerate((168, 336, 672)):
        x_prev = prev  # after a reduction, the first cell reads the reduction's x_prev
        if group:
            cur = nas.reduction_cell(cur, prev, c, name=f"reduction{group - 1}")
        first = 6 * group
        prev, cur = cur, nas.first_cell(cur, x_prev, c, name=f"cell{first}")
        for i in range(first + 1, first + 6):
            prev, cur = cur, nas.normal_cell(cur, prev, c, name=f"cell{i}")
    y = b.relu(cur, name="relu")
    b.global_avgpool(y, name="avgpool")
    return b.build()
