"""Results: typed records written as schema-versioned JSON lines, read back (migrated), summarized.

Light by design: importing it pulls in no torch and no HE library.
"""

from hebench.results.reader import ReadResult, read_records
from hebench.results.records import SCHEMA, Record, record_class, record_from_json
from hebench.results.writer import ResultWriter

__all__ = ["SCHEMA", "ReadResult", "Record", "ResultWriter", "read_records", "record_class", "record_from_json"]
