"""The Hyperformer half of the "across tasks" chapter: its tables (`tables`) and claims (`claims`)."""
