"""Small forms generated from keyword defaults: model parameters and policy options.

A :class:`ParamForm` turns ``{"batch": 1, "fused": False, "max_streams": None}`` into widgets
(ints → ``IntText``, floats → ``FloatText``, bools → ``Checkbox``, strings → ``Text``, ``None`` and
anything else → ``Text`` read with :func:`ast.literal_eval`, empty meaning ``None``) and reads the
values back, keeping only those that differ from the defaults.

>>> form = ParamForm({"r": 3, "units": True, "max_streams": None})
>>> form.widgets["r"].value = 2
>>> form.widgets["max_streams"].value = "4"
>>> form.values()
{'r': 2, 'max_streams': 4}
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from workbench.errors import OptionError

#: Label width and widget width of every form field (the graph source's fields too), so labels
#: such as "size (n_layers)" show whole.
FORM_STYLE = {"description_width": "120px"}
FORM_LAYOUT = {"width": "300px"}
_STYLE, _LAYOUT = FORM_STYLE, FORM_LAYOUT


def value_widget(name: str, default: Any) -> widgets.Widget:
    """One input widget for a keyword ``name`` whose default is ``default``."""
    common: dict[str, Any] = {"description": name, "style": _STYLE,
                              "layout": widgets.Layout(**_LAYOUT)}
    if isinstance(default, bool):
        return widgets.Checkbox(value=default, indent=False, description=name,
                                layout=widgets.Layout(**_LAYOUT))
    if isinstance(default, int):
        return widgets.IntText(value=default, **common)
    if isinstance(default, float):
        return widgets.FloatText(value=default, **common)
    if isinstance(default, str):
        return widgets.Text(value=default, **common)
    text = "" if default is None else repr(default)
    return widgets.Text(value=text, placeholder="none", tooltip="a number, a list like "
                        "['a', 'b'], or empty for none", **common)


def read_value(name: str, widget: widgets.Widget, default: Any) -> Any:
    """The value of ``widget`` as a Python value (OptionError, one line, when unreadable)."""
    if not isinstance(widget, widgets.Text) or isinstance(default, str):
        return widget.value
    text = widget.value.strip()
    if text.lower() in ("", "none"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise OptionError(f"{name}: cannot read {text!r} (give a number, a list like "
                          f"['a', 'b'], or leave it empty for none)") from None


class ParamForm:
    """Widgets for keyword defaults; :meth:`values` returns the changed ones."""

    def __init__(self, defaults: Mapping[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.widgets = {name: value_widget(name, d) for name, d in self.defaults.items()}
        children = list(self.widgets.values()) or [widgets.HTML("<i>no parameters</i>")]
        self.box = widgets.VBox(children, layout=widgets.Layout(width="100%"))

    def values(self, *, changed_only: bool = True) -> dict[str, Any]:
        out = {}
        for name, widget in self.widgets.items():
            value = read_value(name, widget, self.defaults[name])
            if not changed_only or value != self.defaults[name]:
                out[name] = value
        return out

    def __bool__(self) -> bool:
        return bool(self.widgets)
