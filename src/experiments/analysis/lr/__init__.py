"""The learning rate of each cell: chosen on validation, and the views of the lr grid."""
