"""The AdapterFusion half of the "across tasks" chapter: its tables, attention and claims (`tables`), and the
stage-2 grid made from stage 1's records (`plan`: the sources that learned, the rates chosen)."""
