"""A notebook page's launch button opens the notebook the page was executed from. The book renders copies executed
into book/generated/, which the repository does not hold, so the theme's Colab link (built from the page's path)
would open a file that does not exist; `adaptstudy.launch.colab.notebook_url` gives notebooks/<page>.ipynb instead,
from the repository set in pyproject.toml."""

from adaptstudy.launch.colab import notebook_url


def _launch_from_notebooks(app, pagename, templatename, context, doctree):
    url = notebook_url(pagename, app.config.html_theme_options.get("repository_url") or None)
    if url is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                button["url"] = url


def setup(app):
    # after the theme's launch buttons (priority 501), before the page is written
    app.connect("html-page-context", _launch_from_notebooks, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
