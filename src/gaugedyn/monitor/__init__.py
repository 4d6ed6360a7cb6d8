"""gaugedyn's instruments where training already happens.

`Monitor` attaches the Adam update split (`gaugedyn.adam.AdamRecorder`), the gauge
invariants (`gaugedyn.gauge.GaugeRecorder`), the online spike detector on the loss
(`gaugedyn.adam.OnlineSpikeDetector`) and an edge-of-stability probe (`EdgeProbe`)
to a live optimizer, each with its own ``every``, and streams scalars (`KEYS`) to sinks:
memory, CSV, Parquet, TensorBoard, Weights & Biases and the package's store. Framework adapters:
`LightningMonitor` (a Lightning ``Callback``) and `HFMonitor` (a Hugging Face
``TrainerCallback``); event-driven state surgery: `reset_state()`. Torch and the optional
packages load on first use of a name.
"""

from .._lazy import attach

__getattr__, __dir__, __all__ = attach(
    __name__,
    {
        "_monitor": ["Monitor", "DEFAULT_EVERY"],
        "_edge": ["EdgeProbe"],
        "_keys": ["KEYS"],
        "_sinks": [
            "MemorySink",
            "CSVSink",
            "ParquetSink",
            "TensorBoardSink",
            "WandbSink",
            "StoreSink",
        ],
        "_surgery": ["reset_state"],
        "_lightning": ["LightningMonitor"],
        "_hf": ["HFMonitor"],
    },
)
