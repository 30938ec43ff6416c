"""The model's settings, one dict."""

CONFIG = {
    "seq_len": 3,  # rows in one input
    "d_model": 4,  # width of the input and output
    "d_hidden": 8,  # width of the hidden layer
    "eps": 1e-5,  # added to the variance before its square root
    "seed": 0,  # seed of the initial weights
}
