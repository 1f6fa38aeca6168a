"""What each adversary observes: the real protocol paths and simulated views."""
