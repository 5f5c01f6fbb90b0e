"""The "across tasks" chapter, in its two halves, independent of each other: AdapterFusion (`fusion`, study
`fusion`) and Hyperformer (`hyperformer`, study `hyperformer`). The chapter's claims and costs are those of the two
halves one after the other."""
