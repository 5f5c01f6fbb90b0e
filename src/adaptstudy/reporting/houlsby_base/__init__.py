"""The Houlsby chapter at base size: its headline claim, size-64 adapters against full fine-tuning, on the
12-layer `mpnet-base`, beside the same claim on `minilm-l6` and the course reproduction's BERT-base figures."""
