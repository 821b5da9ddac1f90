"""The serving images: `images.<engine>` and `images.build` (`input`), the platforms each
build is for (`platforms`), which builds a stack makes (`decisions`), images pulled across
regions (`regions`) and the `ImageBuilds` component (`builds`)."""
