"""buttons"""
