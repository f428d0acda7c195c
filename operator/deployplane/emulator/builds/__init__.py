"""Builds of uploaded sources: the remote build's checks, the image build."""
