"""The app's own style sheet: what keeps every view inside the app's box at any width.

In JupyterLab at 1,280 px (file browser open) the results pane is about 480 px wide, and ipywidgets
lays widgets out with flexbox, whose items are never narrower than their content unless told so:
one wide table or drawing then widened the whole pane past the notebook's edge, where it was
clipped (the DAG's launch-order list and drawing), and fixed-width buttons cut their labels
("built-in mo…").  Every rule is scoped to ``.wb-app``; the sheet travels in an HTML widget of the
app itself, so it works in JupyterLab, Voilà and a notebook alike, and nothing outside the app is
touched.
"""

from __future__ import annotations

APP_CSS = """
/* an HTML view may be narrower than its content: wide content scrolls in its own box */
.wb-app .widget-html-content { min-width: 0; }
.wb-app .wb-hscroll { overflow-x: auto; max-width: 100%; }
/* the DAG tab: the launch-order list wraps at the pane's width, the drawing scales down to it */
.wb-app .wb-dag table.wb-streams { width: 100%; }
.wb-app .wb-dag table.wb-streams td { overflow-wrap: anywhere; line-height: 1.6; }
.wb-app .wb-dag svg { max-width: 100%; height: auto; }
/* labels that wrap instead of being cut: the status line, the graph-source buttons */
.wb-app .wb-status .widget-html-content { line-height: 1.4; white-space: normal; }
.wb-app .wb-source .widget-toggle-button { width: auto; min-width: max-content;
                                            flex: 1 1 auto; }
.wb-app .wb-source .widget-toggle-buttons .widget-toggle-button:last-child { margin-right: 0; }
/* all columns of the ranking table fit the results pane of a 1,280 px page (issue 45: 20
   columns needed 1,309 px of its 850): a smaller font, tight cells, headers wrapping between
   words (inside a word only when it is wider than 5.2em), the page's tall line height undone;
   a narrower pane (JupyterLab with its file browser open) still scrolls the table */
.wb-app details.wb-cols[open] + .wb-scroll table.wb-table { font-size: 9.5px;
                                                            line-height: 1.25; }
.wb-app details.wb-cols[open] + .wb-scroll table.wb-table th,
.wb-app details.wb-cols[open] + .wb-scroll table.wb-table td { padding: 2px 2px; }
.wb-app details.wb-cols[open] + .wb-scroll table.wb-table th { min-width: 0; max-width: 5.2em;
                                                               overflow-wrap: break-word;
                                                               font-weight: 600; }
"""


def style_html() -> str:
    """The ``<style>`` element of :data:`APP_CSS` (for an HTML widget of the app)."""
    return f"<style>{APP_CSS}</style>"


__all__ = ["APP_CSS", "style_html"]
