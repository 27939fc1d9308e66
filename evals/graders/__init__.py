"""The grader kinds behind `evals.grade_episode`: value matchers, state checks, the reference replay,
reply checks and Python graders. Internal: the public names are exported by `evals`.
"""
