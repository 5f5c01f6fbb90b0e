"""The AdapterFusion half's claims, as declared in `claims.yaml` beside this module; `tables` and `attention` judge
them."""

from adaptstudy.claims.catalog import declaration_path, declare_chapter

DECLARED = declare_chapter(declaration_path(__file__), "fusion")
