"""The Kopf layer: the only package that imports kopf. Handlers stay thin."""
