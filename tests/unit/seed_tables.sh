#!/bin/sh
# The seed documents' tables: every printed figure must lie within its
# stated tolerance of the seed's number or the formula (seed-tables --check).
exec "${RB_SEED_TABLES:-./examples/seed-tables}" --check
