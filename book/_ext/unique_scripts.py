"""A page lists each script once. Under Jupyter Book 1, sphinx-thebe's inline configuration (`const THEBE_JS_URL =
…`) and sphinx-togglebutton's are added twice (once with no file name, once with an empty one), and the second
`const` is an error in every page's console."""


def _unique(app, pagename, templatename, context, doctree):
    seen, scripts = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            scripts.append(script)
    context["script_files"] = scripts


def setup(app):
    app.connect("html-page-context", _unique, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
