"""StatefulDiscovery: discovery whose investigation state lives outside the LLM, in the journal."""
