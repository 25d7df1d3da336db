"""Pure functions of images and text: OCR, embeddings, hashes, scores."""
