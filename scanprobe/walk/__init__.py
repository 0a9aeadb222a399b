"""From live graph objects to plain records: the layer between the backend adapters and the
analysis. Nothing here imports a backend; backend objects come through the adapter's interface."""
