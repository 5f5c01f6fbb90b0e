"""The IMDb chapter (study `peft_imdb`): which parameter-efficient method, by accuracy, runtime, memory, parameters
and data. Its tables (`tables`), its figures (`figures`: per-epoch curves, costs, learning curve) and the report's
conclusions with a verdict each (`claims`)."""
