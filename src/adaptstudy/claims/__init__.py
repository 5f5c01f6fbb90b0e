"""The claims engine: records judged against claims declared as data, for the book's chapters and for your own.

A claim's design and ledger (`declarations`, `ledgers`), what else decides its verdict (`protocol`: grids, rules,
the interval, fingerprinted), the interval (`evidence`, `resampling`), the verdict under a design (`verdicts`), when
runs confirm it (`freeze`, `prerequisites`, `fresh_seeds`) and your own claims (`user_claims`). It imports no chapter
and nothing that trains: `reporting/` builds the chapters' arms and units from their records and calls it.
"""
