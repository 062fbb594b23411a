"""Spark glue: the session, the driver JVM and the three thin stages that schedule the pure functions."""
