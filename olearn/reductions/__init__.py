"""What wraps the scalar learner: one-against-all."""
