"""The read stage: a page's Markdown split into prose and trace blocks, each block's YAML checked (no HTML, no code run)."""
