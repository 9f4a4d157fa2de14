"""Audio: capture, VAD endpointing, STT and confidence, TTS, playback."""
