"""The Don't Stop Pretraining chapter: its tables (`tables`) and claims (`claims`)."""
