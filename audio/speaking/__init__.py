"""speaking"""
