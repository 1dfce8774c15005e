"""Readers of the table formats anml Table 2's UCI sets come in: an R data file (.rda, read by ``rdata``), an ARFF
file (scipy's reader) and delimited text. Each returns a pandas frame whose categorical columns keep their declared
order (an R factor's levels, an ARFF attribute's values), so that ordinal codes follow the source, not the alphabet.
"""

from __future__ import annotations

import io
import warnings

import pandas as pd
from scipy.io import arff

from dml_core.errors import InputError


def read_rda_frame(data: bytes, name: str, where: str) -> pd.DataFrame:
    """The data frame called ``name`` in an R data file's bytes."""
    # Here, not at the top: only preparing the R-packaged sets needs rdata (a GPU box's own Python may lack it).
    import rdata

    try:
        with warnings.catch_warnings():
            # mlbench's files declare no string encoding; their strings (factor levels) are ASCII.
            warnings.filterwarnings("ignore", message="Unknown encoding", category=UserWarning)
            objects = rdata.conversion.convert(rdata.parser.parse_data(data))
    except Exception as error:  # rdata raises many kinds for a file that is not R data
        raise InputError(f"{where}: expected an R data file, could not read it ({error})") from None
    frame = objects.get(name)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{where}: object {name}: expected a data frame, found {sorted(objects)}")
    return frame.reset_index(drop=True)


def read_arff_frame(data: bytes, where: str) -> pd.DataFrame:
    """An ARFF file's rows; nominal attributes as categoricals in their declared order."""
    try:
        records, meta = arff.loadarff(io.StringIO(data.decode("utf-8")))
    except (ValueError, UnicodeDecodeError, arff.ArffError) as error:
        raise InputError(f"{where}: expected an ARFF file, could not read it ({error})") from None
    frame = pd.DataFrame(records)
    for column in meta.names():
        kind, values = meta[column]
        if kind == "nominal":
            text = frame[column].str.decode("utf-8")
            frame[column] = pd.Categorical(text, categories=list(values))
    return frame


def read_delimited_frame(data: bytes, where: str, separator: str = ",") -> pd.DataFrame:
    """Delimited text without a header (a regular expression ``separator`` such as ``r"\\s+"`` is allowed)."""
    try:
        return pd.read_csv(io.BytesIO(data), header=None, sep=separator, skipinitialspace=True, engine="python")
    except (ValueError, pd.errors.ParserError) as error:
        raise InputError(f"{where}: expected delimited text, could not read it ({error})") from None
