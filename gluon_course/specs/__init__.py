"""One module per lesson: ``lessonNN.SPEC`` (see ``gluon_course.spec``)."""
