"""Adding a NodeDef to a GraphDef or FunctionDef, attrs given as Python values.

The session emulator's liveness guards and loop captures (:mod:`.observe_nodes`) and the observer
nodes inside traced functions (:mod:`.npu_jupyter._runtime.functions.observe_nodes`) build nodes by hand, in proto form, because
they edit graphs TensorFlow already built. Both spell an attr the same way, so the spelling lives here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_jupyter._tf_types import NodeDef, RepeatedMessages


def add_node(nodes: RepeatedMessages[NodeDef], name: str, op: str, inputs: list[str], **attrs: Any) -> NodeDef:
    """Append a NodeDef to ``nodes`` (``GraphDef.node`` or ``FunctionDef.node_def``) and return it.

    Attr values: ``("type", enum)`` a dtype, ``("types", [enum, ...])`` a dtype list, ``bool``, ``int``,
    ``str`` (bytes in the proto), anything else a TensorProto.
    """
    node = nodes.add(name=name, op=op)
    node.input.extend(inputs)
    for key, value in attrs.items():
        if isinstance(value, tuple) and value[0] == "type":
            node.attr[key].type = value[1]
        elif isinstance(value, tuple) and value[0] == "types":
            node.attr[key].list.type.extend(value[1])
        elif isinstance(value, bool):
            node.attr[key].b = value
        elif isinstance(value, int):
            node.attr[key].i = value
        elif isinstance(value, str):
            node.attr[key].s = value.encode()
        else:
            node.attr[key].tensor.CopyFrom(value)
    return node


__all__ = ["add_node"]
