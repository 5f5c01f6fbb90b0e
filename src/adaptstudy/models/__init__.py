"""The models layer: backbones (registry, ONNX conversion), methods (registry, one module per family), the
masked-LM wrapper for pretraining and the multi-task model."""
