"""The numbers the IMDb PEFT chapter sets beside ours: the report's, with its backbones and splits."""

from __future__ import annotations

from adaptstudy.reporting.published import Published

PEFT_REPORT = 'the "Efficient Adaption of Large Pre-Trained Models" report'
PEFT_REPORT_METHODS = (
    "full",
    "embeddings_only",
    "encoder_only",
    "prompt_tuning",
    "bitfit",
)  # its All/Embedding/Encoder/Prompt/BitFit
PEFT_REPORT_SETTINGS = {0.9: "90%/10%", 0.3: "30%/70%"}  # train/validation shares of IMDb's 25k training reviews
# Final validation accuracy (points), per backbone and setting, in PEFT_REPORT_METHODS order.
_PEFT_REPORT_ROWS = {
    ("TinyBERT", 0.9): (84.0, 82.0, 80.0, 77.0, 76.0),
    ("TinyBERT", 0.3): (80.0, 74.0, 78.0, 75.0, 65.0),
    ("TinyRoBERTa", 0.9): (83.0, 80.0, 74.0, 70.0, 82.0),
    ("TinyRoBERTa", 0.3): (82.0, 73.0, 69.0, 66.0, 77.0),
}
# Trainable parameters and epoch runtimes (GPU seconds) as the report gives them (prompt tuning and BitFit: no count
# given).
PEFT_REPORT_PARAMS = {
    "TinyBERT": {"full": 4_385_920, "embeddings_only": 3_972_864, "encoder_only": 396_544},
    "TinyRoBERTa": {"full": 16_979_776, "embeddings_only": 12_999_936, "encoder_only": 3_979_840},
}
PEFT_REPORT_EPOCH_S = {
    "TinyBERT": {"full": "5", "embeddings_only": "3", "encoder_only": "4", "prompt_tuning": "5–6", "bitfit": "1"},
    "TinyRoBERTa": {
        "full": "12–13",
        "embeddings_only": "9",
        "encoder_only": "10–11",
        "prompt_tuning": "12",
        "bitfit": "2",
    },
}
# Which of our backbones stands in for which of the report's.
PEFT_REPORT_STAND_INS = {"minilm-l6": "TinyRoBERTa", "minilm-l3": "TinyBERT"}

PUBLISHED: list[Published] = [
    *(
        Published(
            paper=PEFT_REPORT,
            source="final validation accuracy",
            backbone=backbone,
            split=f"IMDb validation ({PEFT_REPORT_SETTINGS[share]} split)",
            task="imdb",
            method=method,
            metric="accuracy",
            value=value,
        )
        for (backbone, share), values in _PEFT_REPORT_ROWS.items()
        for method, value in zip(PEFT_REPORT_METHODS, values)
    ),
]
