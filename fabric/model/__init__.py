"""The inventory as users write it: YAML with lines, pydantic models, units, QoS presets, platforms."""
