"""Secret values of the stack file: the slots (`input`), the stack's own SSM SecureString
parameters (`decisions`, `component`) and the references a task reads them by (`refs`)."""
